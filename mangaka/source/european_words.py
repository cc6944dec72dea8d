"""The words of French, Spanish, Russian and German that ``european.py`` reads attributions and
names by: speech verbs (past simple and present, as narration uses them; Russian in each gender),
titles, nouns for roles, subject pronouns, and the capitalised function words that are never names
(articles, pronouns, conjunctions, adverbs that open sentences, greetings, days and months; German
also the nouns most used without an article, ``zu Hause``)."""

from __future__ import annotations

VERBS = {
    "fr": (
        "dit|dis|demanda|demande|répondit|répond|murmura|murmure|chuchota|chuchote|souffla|souffle|cria|"
        "crie|hurla|hurle|reprit|reprend|ajouta|ajoute|continua|continue|poursuivit|poursuit|répliqua|"
        "réplique|rétorqua|rétorque|lança|lance|fit|fait|interrogea|insista|protesta|soupira|soupire|gémit|"
        "grogna|grommela|bredouilla|balbutia|marmonna|marmonne|expliqua|déclara|annonça|observa|remarqua|"
        "conclut|avoua|admit|suggéra|proposa|ordonna|supplia|implora|plaisanta|ricana|sourit|rit|railla|"
        "objecta|coupa|intervint|enchaîna|renchérit|précisa|corrigea|affirma|assura|confirma|nota|jeta|"
        "glissa|tonna|rugit|siffla|appela|commenta|questionna|pensa|songea|hasarda|risqua|concéda|grinça|"
        "gronda|haleta|sanglota|bafouilla|articula|prononça|souligna|rappela|résuma|trancha|conseilla|"
        "répéta|insinua|s['’]écria|s['’]exclama|s['’]étonna|s['’]enquit|s['’]impatienta|s['’]emporta|"
        "s['’]excusa|se récria|se justifia|se lamenta|se moqua"
    ),
    "es": (
        "dijo|dice|preguntó|pregunta|respondió|responde|contestó|contesta|gritó|grita|exclamó|murmuró|"
        "murmura|susurró|susurra|añadió|añade|agregó|continuó|prosiguió|repuso|replicó|insistió|insiste|"
        "explicó|comentó|afirmó|aseguró|declaró|anunció|ordenó|suplicó|rogó|suspiró|sollozó|balbuceó|"
        "tartamudeó|masculló|gruñó|rió|rio|sonrió|bromeó|protestó|objetó|interrumpió|intervino|concluyó|"
        "admitió|reconoció|propuso|sugirió|advirtió|observó|señaló|apuntó|inquirió|terció|musitó|bramó|"
        "chilló|vociferó|espetó|soltó|insinuó|pensó|llamó|repitió|corrigió|confesó|quiso saber"
    ),
    "ru": (
        "(?:сказал|спросил|ответил|крикнул|закричал|воскликнул|прошептал|шепнул|пробормотал|пробурчал|"
        "добавил|продолжил|продолжал|заметил|повторил|возразил|перебил|объяснил|предложил|вздохнул|"
        "проговорил|промолвил|буркнул|рявкнул|выкрикнул|позвал|попросил|протянул|сообщил|объявил|"
        "приказал|велел|уточнил|подумал|подтвердил|заявил|начал|пояснил|отрезал|огрызнулся|всхлипнул|"
        "прошипел|простонал|произнёс|произнес)(?:а|и)?|произнесл[аи]|"
        "(?:улыбнул|усмехнул|засмеял|согласил|удивил|поинтересовал|отозвал|откликнул|признал|"
        "спохватил|рассмеял|обратил|извинил)(?:ся|ась|ись)|говорит|спрашивает|отвечает|кричит|шепчет"
    ),
    "de": (
        "sagte|sagt|fragte|fragt|antwortete|antwortet|rief|ruft|flüsterte|flüstert|murmelte|murmelt|meinte|"
        "meint|erwiderte|erwidert|entgegnete|schrie|seufzte|brummte|knurrte|stammelte|stotterte|lachte|"
        "lächelte|fuhr|fügte|erklärte|bemerkte|warf|wiederholte|wisperte|zischte|brüllte|jammerte|klagte|"
        "schluchzte|befahl|bat|drängte|beharrte|gab|widersprach|unterbrach|versicherte|gestand|räumte|"
        "dachte|mahnte|scherzte|spottete|keuchte|krächzte|raunte|hauchte|protestierte|verkündete|"
        "schimpfte|grinste|grummelte|begann|versetzte|sprach"
    ),
}

TITLES = {
    "fr": (
        r"(?:Monsieur|Madame|Mademoiselle|M\.|Mme|Mlle|Docteur|Maître|Capitaine|Père|Mère|Sœur|Frère|Oncle"
        r"|Tante)"
    ),
    "es": r"(?:Señor|Señora|Señorita|Sr\.|Sra\.|Srta\.|Don|Doña|Doctor|Doctora|Capitán|Padre|Madre|Tío|Tía)",
    "ru": r"(?!)",  # Russian has no capitalised titles: a first name and patronymic are two names
    "de": r"(?:Herr|Frau|Fräulein|Doktor|Dr\.|Onkel|Tante|Kapitän|Professor|Pater|Schwester|Bruder)",
}
FEMALE_TITLES = frozenset(
    "Madame Mademoiselle Mme Mlle Mère Sœur Tante Señora Señorita Sra. Srta. Doña Doctora Madre Tía "
    "Frau Fräulein Schwester".split()
)

ROLE_NOUNS = {
    "fr": (
        "homme|femme|fille|garçon|enfant|gamin|gamine|inconnu|inconnue|étranger|étrangère|vieux|vieille|"
        "vieillard|aubergiste|patron|patronne|marchand|marchande|garde|gardien|gardienne|soldat|officier|"
        "capitaine|roi|reine|prince|princesse|prêtre|curé|abbé|médecin|docteur|juge|serveur|serveuse|"
        "cocher|paysan|paysanne|dame|demoiselle|concierge|voisin|voisine|servante|valet|commissaire|"
        "inspecteur|policier|professeur|directeur|directrice|mère|père|grand-mère|grand-père|tante|oncle|"
        "facteur|infirmière|infirmier|chauffeur|conducteur|gendarme|nourrice"
    ),
    "es": (
        "hombre|mujer|niño|niña|chico|chica|muchacho|muchacha|anciano|anciana|viejo|vieja|joven|"
        "desconocido|desconocida|extranjero|extranjera|forastero|guardia|soldado|oficial|capitán|rey|reina|"
        "príncipe|princesa|cura|sacerdote|médico|doctor|doctora|juez|maestro|maestra|profesor|profesora|"
        "camarero|camarera|tabernero|posadero|posadera|dueño|dueña|vecino|vecina|criada|criado|madre|"
        "padre|abuelo|abuela|tío|tía|policía|comisario|inspector|cochero|campesino|campesina|cartero|"
        "enfermera|enfermero|portero|portera|conductor|cocinero|cocinera|chófer|chofer|sargento|niñera"
    ),
    "ru": (
        "старик|старуха|старушка|мальчик|девочка|девушка|парень|женщина|мужчина|незнакомец|незнакомка|"
        "солдат|офицер|капитан|доктор|врач|хозяин|хозяйка|мать|отец|бабушка|дедушка|священник|учитель|"
        "учительница|продавец|продавщица|сторож|кучер|ямщик|барин|барыня|почтальон|сосед|соседка|проводник|"
        "проводница|официант|официантка|медсестра|охранник|водитель|шофёр|шофер|кондуктор|полицейский|няня"
    ),
    "de": (
        "Alte|Mann|Frau|Junge|Mädchen|Fremde|Wirt|Wirtin|Greis|Greisin|Soldat|Offizier|Wächter|Arzt|Ärztin|"
        "Doktor|Lehrer|Lehrerin|Kellner|Kellnerin|König|Königin|Prinz|Prinzessin|Kapitän|Pfarrer|Priester|"
        "Händler|Bauer|Bäuerin|Kutscher|Diener|Dienerin|Magd|Knecht|Mutter|Vater|Großmutter|Großvater|"
        "Briefträger|Schaffner|Schaffnerin|Nachbar|Nachbarin|Krankenschwester|Fahrer|Fahrerin|Polizist|"
        "Polizistin"
    ),
}
FEMALE_ROLES_RU = frozenset(
    "старуха старушка девочка девушка женщина незнакомка хозяйка мать бабушка учительница продавщица "
    "барыня соседка проводница официантка медсестра няня".split()
)
# Subject pronouns: the ones with a gender (the first two) and the others (a speaker, but whom?).
PRONOUNS = {
    "fr": ("il", "elle", "ils|elles|on|je|j['’]|tu|nous|vous"),
    "es": ("él", "ella", "ellos|ellas|yo|tú|usted|ustedes|nosotros|nosotras|vosotros"),
    "ru": ("он", "она", "они|я|ты|мы|вы"),
    "de": ("er", "sie", "ich|du|wir|ihr|es|man"),
}

STOP = {
    "fr": """
    Le La Les Un Une Des Du De Il Elle Ils Elles On Je Tu Nous Vous Me Te Se Mais Et Ou Donc Or Ni
    Car Puis Quand Lorsque Comme Si Dans Sur Sous Avec Sans Pour Par En Au Aux Ce Cet Cette Ces Mon
    Ma Mes Ton Ta Tes Son Sa Ses Notre Nos Votre Vos Leur Leurs Qui Que Quoi Quel Quelle Quels
    Quelles Où Pourquoi Comment Combien Oui Non Ah Oh Eh Bon Bien Alors Ensuite Enfin Pourtant
    Cependant Après Avant Déjà Encore Toujours Jamais Rien Personne Tout Tous Toute Toutes Chaque
    Aucun Aucune Voilà Voici Ici Là Merci Pardon Bonjour Bonsoir Salut Adieu Monsieur Madame
    Mademoiselle Chapitre Ça Cela Ceci Peut-être Même Aussi Ne Pas Plus Très Trop Moi Toi Lui Eux
    Dieu Seigneur Lundi Mardi Mercredi Jeudi Vendredi Samedi Dimanche Janvier Février Mars Avril Mai
    Juin Juillet Août Septembre Octobre Novembre Décembre Hier Demain Aujourd Maintenant Soudain
    Parfois Souvent Certes Hélas Allons Tiens Voyons Écoute Écoutez Attends Attendez Viens Venez
    Regarde Regardez Non Vers Chez Entre Contre Depuis Pendant Devant Derrière Près Loin Dehors
    Dedans Partout
    """,
    "es": """
    El La Los Las Lo Un Una Unos Unas Él Ella Ellos Ellas Yo Tú Usted Ustedes Nosotros Nosotras
    Vosotros Me Te Se Le Les Nos Pero Y E O U Ni Que Qué Quién Quiénes Cuál Cuáles Cuándo Cuando
    Dónde Donde Cómo Como Por Porque Para Con Sin En De Del Al A Ante Bajo Desde Hasta Hacia Entre
    Sobre Tras Si Sí No Ya Aún Todavía Entonces Luego Después Antes Mientras Aunque Ahora Hoy Ayer
    Mañana Aquí Allí Ahí Allá Este Esta Esto Estos Estas Ese Esa Eso Esos Esas Aquel Aquella Mi Mis
    Tu Tus Su Sus Nuestro Nuestra Todo Toda Todos Todas Nada Nadie Algo Alguien Cada Otro Otra Muy
    Más Menos Tan También Tampoco Bueno Bien Vale Claro Gracias Hola Adiós Oh Ah Ay Eh Dios Señor
    Señora Señorita Don Doña Capítulo Lunes Martes Miércoles Jueves Viernes Sábado Domingo Enero
    Febrero Marzo Abril Mayo Junio Julio Agosto Septiembre Octubre Noviembre Diciembre Quizá Quizás
    Tal Vamos Mira Oye Espera Perdón Siempre Nunca Pues Así Solo Sólo Incluso Además
    """,
    "ru": """
    Он Она Оно Они Я Ты Мы Вы Его Её Ее Их Ему Ей Им Но И А Или Да Нет Не Ни Когда Где Куда Откуда
    Как Почему Зачем Что Кто Чей Какой Какая Какое Какие Это Этот Эта Эти Тот Та То Те Так Там Тут
    Здесь Вот Вон Потом Затем Тогда Теперь Сейчас Уже Ещё Еще Тоже Также Только Даже Вдруг Если Хотя
    Пока Чтобы После Перед Над Под При Про Через Без Для До Из От По С В На К О У За Между Мой Моя
    Моё Мои Твой Твоя Наш Наша Ваш Ваша Свой Весь Вся Всё Все Каждый Никто Ничего Ничто Ну Ах Ох Эх
    Ой Ага Спасибо Пожалуйста Привет Господи Бог Глава Ладно Хорошо Конечно Может Наверное Итак
    Однако Впрочем Зато Сначала Снова Опять Понедельник Вторник Среда Четверг Пятница Суббота
    Воскресенье Январь Февраль Март Апрель Май Июнь Июль Август Сентябрь Октябрь Ноябрь Декабрь
    Слушай Смотри Давай Вчера Завтра Сегодня Иногда Всегда Никогда Почти Очень Лишь Ведь Же Бы Ли
    Вечером Утром Ночью Днём Днем Наконец Вскоре Однажды Сразу Медленно Тихо
    """,
    "de": """
    Der Die Das Den Dem Des Ein Eine Einen Einem Einer Eines Er Sie Es Ich Du Wir Ihr Ihm Ihn Ihnen
    Mich Dich Sich Mein Meine Dein Deine Sein Seine Ihre Unser Unsere Euer Und Aber Oder Denn Doch
    Als Wenn Ob Weil Dass Daß Da Dann Danach Damals Jetzt Nun Noch Schon Auch Nur So Wie Was Wer Wo
    Warum Wann Wohin Woher Welche Welcher Dieser Diese Dieses Jener Jene Kein Keine Nicht Nichts
    Niemand Jemand Etwas Alle Alles Jeder Jede Man Mit Ohne Für Gegen Um Durch Bei Nach Von Vor Zu
    Zum Zur Im In Am An Auf Aus Über Unter Hinter Neben Zwischen Ja Nein Oh Ach Na Gut Danke Bitte
    Hallo Herr Frau Fräulein Doktor Gott Kapitel Montag Dienstag Mittwoch Donnerstag Freitag Samstag
    Sonntag Januar Februar März April Mai Juni Juli August September Oktober November Dezember Hause
    Angst Zeit Ruhe Recht Glück Hilfe Bescheid Leid Schuld Mut Geld Lust Hunger Durst Platz Morgen
    Abend Nacht Tag Mal Leute Menschen Hand Hände Kopf Augen Gesicht Tür Fenster Haus Zimmer Stimme
    Wasser Weg Seite Ende Welt Sofort Plötzlich Endlich Vielleicht Immer Nie Hier Dort Heute Gestern
    Schau Hör Komm Warte Wirklich
    """,
}
